"""The GitHub Action's entrypoint: the only code that reads the Actions environment."""
