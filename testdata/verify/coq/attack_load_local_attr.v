#[local] Local Load "/tmp/warren-verify-canary/Secret.v".
