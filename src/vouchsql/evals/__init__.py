"""Evaluation harnesses (``vouch eval …``): confidence, execution accuracy, premise critique and
planted errors, on shared metrics (:mod:`.metrics`), loaders (:mod:`.datasets`), run folders
with manifests, resume and replay (:mod:`.runs`) and reports (:mod:`.report`)."""
