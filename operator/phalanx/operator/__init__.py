"""The operator shell: watches into indexes, one debounced scheduling loop, a writer.

Data flows one way: watch events -> cache -> snapshot -> `run_cycle` -> writer.
Nothing here decides where a pod goes; the pure core does.
"""
