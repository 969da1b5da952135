"""Text to features: normalisation, tokens, segmentation, noise words and counting."""
