"""Evaluation harnesses: planted errors now; confidence, premise and execution accuracy later."""
