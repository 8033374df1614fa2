Theorem uses_header_hint : True.
Proof. auto. Qed.
