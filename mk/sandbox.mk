# Sandbox suite as an ordinary user: namespace mode must work for a worker
# that is not root (1:1 uid mapping, no cgroups). Creates the system user
# $(SANDBOX_TEST_USER) if missing (needs root), builds the test binaries of
# ./sandbox, ./sandbox/files and ./sandbox/session, the dedicated init, the session agent and the
# hopper fixture, and runs them as
# that user. CI=true is passed through, so a missing kernel feature fails
# instead of skipping.
SANDBOX_TEST_USER ?= warren-test
# The binaries go where the test user can run them, named after this
# checkout: two checkouts testing at once must not remove each other's.
UNPRIV_TAG        := $(shell printf %s "$(CURDIR)" | cksum | cut -d' ' -f1)
SANDBOX_TEST_BIN  ?= /tmp/warren-sandbox-unpriv-$(UNPRIV_TAG).test
SANDBOX_FILES_BIN ?= /tmp/warren-sandbox-files-unpriv-$(UNPRIV_TAG).test
SANDBOX_INIT_BIN  ?= /tmp/warren-sandbox-unpriv-init-$(UNPRIV_TAG)
SESSION_TEST_BIN  ?= /tmp/warren-session-unpriv-$(UNPRIV_TAG).test
SESSION_AGENT_BIN ?= /tmp/warren-session-unpriv-agent-$(UNPRIV_TAG)
HOPPER_BIN        ?= /tmp/warren-sandbox-unpriv-hopper-$(UNPRIV_TAG)

.PHONY: test-sandbox-unpriv
test-sandbox-unpriv: ## Run the sandbox tests as an unprivileged user (creates $(SANDBOX_TEST_USER) if missing)
	@if [ "$$(id -u)" != 0 ]; then \
		echo "test-sandbox-unpriv: already unprivileged, running directly"; \
		$(GO) test -count=1 -timeout 10m ./sandbox/...; exit $$?; \
	fi; \
	id -u $(SANDBOX_TEST_USER) >/dev/null 2>&1 || \
		useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin $(SANDBOX_TEST_USER)
	$(GO) test -c -o $(SANDBOX_TEST_BIN) ./sandbox
	$(GO) test -c -o $(SANDBOX_FILES_BIN) ./sandbox/files
	$(GO) test -c -o $(SESSION_TEST_BIN) ./sandbox/session
	CGO_ENABLED=0 $(GO) build -o $(SANDBOX_INIT_BIN) ./cmd/warren-sandbox-init
	CGO_ENABLED=0 $(GO) build -o $(SESSION_AGENT_BIN) ./cmd/warren-sandbox-agent
	CGO_ENABLED=0 $(GO) build -o $(HOPPER_BIN) ./sandbox/sandboxtest/hopper
	chmod 0755 $(SANDBOX_TEST_BIN) $(SANDBOX_FILES_BIN) $(SESSION_TEST_BIN) $(SANDBOX_INIT_BIN) $(SESSION_AGENT_BIN) $(HOPPER_BIN)
	cd / && setpriv --reuid=$(SANDBOX_TEST_USER) --regid=$(SANDBOX_TEST_USER) --init-groups \
		env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp TMPDIR=/tmp CI="$(CI)" \
		WARREN_SANDBOX_TEST_INIT=$(SANDBOX_INIT_BIN) WARREN_SANDBOX_TEST_HOPPER=$(HOPPER_BIN) \
		$(SANDBOX_TEST_BIN) -test.count=1 -test.timeout=10m
	cd / && setpriv --reuid=$(SANDBOX_TEST_USER) --regid=$(SANDBOX_TEST_USER) --init-groups \
		env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp TMPDIR=/tmp CI="$(CI)" \
		$(SANDBOX_FILES_BIN) -test.count=1 -test.timeout=5m
	cd / && setpriv --reuid=$(SANDBOX_TEST_USER) --regid=$(SANDBOX_TEST_USER) --init-groups \
		env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp TMPDIR=/tmp CI="$(CI)" \
		WARREN_SANDBOX_TEST_INIT=$(SANDBOX_INIT_BIN) WARREN_SESSION_TEST_AGENT=$(SESSION_AGENT_BIN) \
		$(SESSION_TEST_BIN) -test.count=1 -test.timeout=10m
	rm -f $(SANDBOX_TEST_BIN) $(SANDBOX_FILES_BIN) $(SESSION_TEST_BIN) $(SANDBOX_INIT_BIN) $(SESSION_AGENT_BIN) $(HOPPER_BIN)
