# Accord. `make test` is what CI runs.
GO        ?= go
PKGS      := ./...
FUZZTIME  ?= 10s

.PHONY: test fmt-check vet unit unit-root unit-examples soak bench fuzz run tidy \
	web web-deps web-check web-check-run js-deps js-check js-check-run mcp-agent

# test first checks formatting and installs the pinned npm packages (npm
# ci) that the Go ↔ JavaScript interoperability tests (sync/js/interop)
# and the MCP TypeScript SDK agent test need; then it vets and runs the
# two modules' Go tests and the Node checks side by side (vet walks
# examples/, so it waits for npm ci to finish rewriting node_modules), each
# one's output printed whole when it ends (-Otarget). Any failure fails
# the run. TEST_JOBS caps how many run at once.
TEST_JOBS ?= 4

test:
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target fmt-check js-deps web-deps mcp-agent
	@echo "test: vet, unit-root, unit-examples, js-check-run and web-check-run side by side; each one's output follows when it ends"
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target vet unit-root unit-examples js-check-run web-check-run

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	@for m in $$(find examples -name go.mod -not -path '*/node_modules/*' 2>/dev/null); do \
		d=$$(dirname $$m); echo "go vet in $$d"; (cd $$d && $(GO) vet ./...) || exit 1; done

# unit runs the Go tests of the root module, then of each module under
# examples/ (make test runs the two side by side). go test starts packages
# in the order named, GOMAXPROCS at a time, so the longest are named first
# (SLOW_FIRST, and examples' server): started last, one of them would
# run alone at the end.
unit: unit-root unit-examples

SLOW_FIRST := ./question ./sync/server ./sync/cluster ./sync/replica ./crdt

unit-root:
	$(GO) test -race -count=1 -timeout 20m $(if $(filter ./...,$(PKGS)),$(SLOW_FIRST)) $(PKGS)

unit-examples:
	@for m in $$(find examples -name go.mod -not -path '*/node_modules/*' 2>/dev/null); do \
		d=$$(dirname $$m); first=$$(test -d $$d/server && echo ./server); \
		echo "go test in $$d"; (cd $$d && $(GO) test -race -count=1 $$first ./...) || exit 1; done

# soak runs the root module's tests with SOAK_CHECKS cases for every rapid
# property that takes its count from RAPID_CHECKS, where make test runs
# each at its default (crdt's properties 200, most others rapid's 100,
# question's bbolt-backed ones 15 and 20): a long run after a change to
# the sync, state or storage code.
SOAK_CHECKS ?= 2000

soak:
	RAPID_CHECKS=$(SOAK_CHECKS) $(GO) test -race -count=1 -timeout 0 $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Each fuzz target runs for FUZZTIME; crashers land in testdata/fuzz and
# become regression cases.
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
			echo "fuzz $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME); \
		done; done

run:
	cd examples/server && $(GO) run .

# The example server's web page (examples/server/web). Its built bundle,
# web/dist, is committed so that `make run` needs no Node.js.
WEB := examples/server/web

# web installs the versions pinned in package-lock.json and rebuilds
# web/dist from web/src.
web:
	cd $(WEB) && npm ci --no-audit --no-fund && npm run build

# web-check type-checks the page, rebuilds it into a temporary folder and
# fails if that differs from the committed web/dist. It needs the npm
# registry for npm ci (web-deps) and nothing else; web-check-run is the
# check alone, on the packages installed.
web-check: web-deps
	@$(MAKE) --no-print-directory web-check-run

web-deps:
	@cd $(WEB) && npm ci --no-audit --no-fund --loglevel=error

web-check-run:
	@cd $(WEB) && npm run --silent check && \
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && node build.mjs "$$tmp" && \
	if ! diff -rq "$$tmp" dist; then \
		echo "$(WEB)/dist does not match its sources: run 'make web' and commit web/dist"; exit 1; fi; \
	echo "web-check: $(WEB)/dist matches its sources"

# The browser and Node client package @accord-crdt/client (sync/js).
JS := sync/js

# js-check installs its pinned packages (js-deps), type-checks it and fails
# if its committed types/ (the .d.ts generated from its JSDoc) differ from
# its sources, runs its Node tests against the real Go server
# (sync/js/test/server, built by the tests) and checks its bundle size
# against its budget; js-check-run is all but the install.
js-check: js-deps
	@$(MAKE) --no-print-directory js-check-run

js-deps:
	@cd $(JS) && npm ci --no-audit --no-fund --loglevel=error

js-check-run:
	@cd $(JS) && \
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && npx tsc -p tsconfig.json --outDir "$$tmp" && \
	if ! diff -r "$$tmp" types; then \
		echo "$(JS)/types does not match its sources: run 'npm run types' in $(JS) and commit types/"; exit 1; fi && \
	GO="$(GO)" npm test --silent && node scripts/size.mjs && \
	echo "js-check: $(JS) types, tests and size ok"

# mcp-agent installs the MCP TypeScript SDK pinned in
# examples/server/mcp-agent/package-lock.json, which examples/server's
# TestMCPTypeScriptAgent runs under Node as an agent would.
MCP_AGENT := examples/server/mcp-agent

mcp-agent:
	@cd $(MCP_AGENT) && npm ci --no-audit --no-fund --loglevel=error && \
	echo "mcp-agent: $(MCP_AGENT)/node_modules installed"
