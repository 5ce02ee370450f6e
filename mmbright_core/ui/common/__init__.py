"""What every page shares: session state, the sidebar, the cached loaders, rendering, the guards."""
