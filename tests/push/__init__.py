"""The live push to signage and crew handhelds: streams, access, hostile clients, revocation, slow clients."""
