Check I.
Load "/tmp/warren-verify-canary/Secret.v".
