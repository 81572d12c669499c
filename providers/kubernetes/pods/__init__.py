"""What a placeholder pod is made of: its spec, labels, disruption and pre-pull choices."""
