// Package deploy_test exercises the files in deploy/: the NATS cluster
// configuration is loaded by the embedded server's own parser and brought
// up on loopback, the systemd units pass systemd-analyze (where it is
// installed), and every Kubernetes manifest decodes strictly into its API
// type.
package deploy_test
