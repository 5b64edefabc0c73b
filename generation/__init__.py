"""Jobs that make evidence and answers: tokenise, chunk, select or compress
(evidence policies) into stored artifacts; run readers and judges; score.

Reads items and pools from the warehouse's ``raw`` tables; imports ``warehouse``
only.
"""
