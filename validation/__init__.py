"""Cross-checks of pyopnb against the original R packages (recorded and live)."""
