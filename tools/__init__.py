"""Course tooling that no notebook imports: the headless notebook runner (`python -m tools.notebook_runner`)
and pre-warm (`python -m tools.prewarm`, `make prewarm`). May import any stage of `lessons`."""
