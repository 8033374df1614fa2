Declare ML Module "warren_evil_plugin".

Theorem two_two : 2 + 2 = 5.
Proof. evil_tactic. Qed.
