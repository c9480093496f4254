"""Google's agents-cli projects as they are: their datasets, traces and eval config."""
