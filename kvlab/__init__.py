"""The `kvlab` command: the simulator's CLI plus subcommands that need the app or calibration."""
