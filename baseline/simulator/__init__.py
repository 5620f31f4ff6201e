"""Building blocks of the fleet simulator (see baseline.simulate for the dataset it writes)."""
