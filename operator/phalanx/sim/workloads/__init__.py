"""Job traces for the simulator: a seeded synthetic generator and the Alibaba 2023 trace."""
