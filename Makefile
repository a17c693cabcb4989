.PHONY: gate gate-full demo
gate:
	cargo xtask gate
gate-full:
	cargo xtask gate --full
demo:
	cargo xtask demo
