"""Python flatbuffer code generated from ../schema.fbs by regen.py; do not edit."""
