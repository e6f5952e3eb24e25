"""GL5xx: random number generation under capture."""
