"""cclab — a congestion-control lab."""
