# Warren. `make help` lists the targets.
GO       ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
export PATH := $(dir $(GO)):$(HOME)/go/bin:$(PATH)
BIN      := bin/warren
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
# Debian packages the tests and the demo need: coq checks proofs (its
# development files build Warren's policy plugin against it; csdp is the
# solver psatz calls), bubblewrap
# is the benchmark baseline, python3 runs inside sandboxes in tests, util-linux
# gives setpriv for the unprivileged test run.
APT_PACKAGES := coq libcoq-core-ocaml-dev coinor-csdp bubblewrap python3 util-linux passwd e2fsprogs
STATICCHECK  := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# The stock nats CLI the docs' walkthroughs are run with (cmd/warren tests).
NATSCLI      := github.com/nats-io/natscli/nats@v0.5.0
# Packages with concurrency worth the race detector: `make test` runs them
# once, with it, and every other package (OTHER_PKGS) once, without.
RACE_PKGS := ./messages/... ./broker/... ./worker/... ./scheduler/... ./sandbox/... ./verify/...
OTHER_PKGS = $(shell $(GO) list ./... | grep -v -E '^github.com/warrenhq/warren/(messages|broker|worker|scheduler|sandbox|verify)(/|$$)')

.PHONY: help deps tools build test test-go test-other test-race lint bench demo clean

help: ## Show this help
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

deps: ## Install the Debian packages the tests and demo need (as root) if missing
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "missing Debian packages:$$missing; run: sudo apt-get install -y$$missing" >&2; exit 1; fi; \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

tools: ## Install the Go tools the tests run (natscli into $(HOME)/go/bin) if missing
	@want=$(lastword $(subst @, ,$(NATSCLI))); \
	if [ "$$(nats --version 2>/dev/null)" != "$$want" ]; then \
		echo "installing $(NATSCLI)"; \
		cd / && GOBIN=$(HOME)/go/bin GOFLAGS= GOWORK=off CGO_ENABLED=0 $(GO) install $(NATSCLI); \
	fi

# All static (no cgo): no dynamic loader and libc start (its CPU probing
# alone is a visible part of a client command's start in a VM), pure-Go
# resolver and user lookup.
build: ## Build bin/warren (the client), bin/warren-host (broker, worker, doctor) and the sandbox binaries beside them
	CGO_ENABLED=0 $(GO) build -tags client -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/warren
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(dir $(BIN))warren-host ./cmd/warren
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))warren-sandbox-init ./cmd/warren-sandbox-init
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))warren-sandbox-agent ./cmd/warren-sandbox-agent

test: deps tools build ## Run every test once: the concurrent packages under the race detector, the rest without, then the sandbox suite unprivileged
	$(MAKE) --no-print-directory test-race
	$(MAKE) --no-print-directory test-other
	$(MAKE) --no-print-directory test-sandbox-unpriv

test-go: ## Every package without the race detector
	$(GO) test -count=1 -timeout 15m ./...

test-other: ## The packages outside RACE_PKGS, without the race detector
	$(GO) test -count=1 -timeout 15m $(OTHER_PKGS)

test-race: ## Race detector on the concurrent packages
	$(GO) test -race -count=1 -timeout 15m $(RACE_PKGS)

lint: ## gofmt, go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

bench: deps ## Benchmarks with same-run baselines; see docs/benchmarks.md
	$(GO) test -run '^$$' -bench . -skip 'ExecLatency|SandboxRunLatency' -benchtime 3s -timeout 30m ./...
	# warren exec and warren sandbox run vs bwrap: a fixed number of alternated rounds (each command after an idle pause)
	$(GO) test -run '^$$' -bench 'ExecLatency|SandboxRunLatency' -benchtime 25x -timeout 10m ./cmd/warren/

demo: deps build ## Verify the example Coq batch on the embedded default
	./$(BIN) verify examples/coq/batch.jsonl --profile coq --out /tmp/warren-demo-results.jsonl

clean:
	rm -rf bin

-include mk/*.mk
