"""The simulated NPU: chip specs, the event-driven timing engine, roofline bounds, reports."""
