"""One encoder per vendor: a simulated history written as that vendor delivers it (independent of the adapters)."""
