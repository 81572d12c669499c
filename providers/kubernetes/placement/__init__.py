"""Where pairs can go and how nodes come for them: fit, packing, the launch ramp's inputs."""
