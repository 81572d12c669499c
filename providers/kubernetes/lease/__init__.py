"""One owner per scale set: the Lease election and the fence every write asks."""
