# Accord. `make test` is what CI runs.
GO        ?= go
PKGS      := ./...
FUZZTIME  ?= 10s

.PHONY: test fmt-check vet unit bench fuzz run tidy web web-check js-check mcp-agent

# js-check, web-check and mcp-agent run before unit: they install the
# pinned npm packages (npm ci) that the Go ↔ JavaScript interoperability
# tests (sync/js/interop), the page's browser tests and the MCP TypeScript
# SDK agent test need.
test: fmt-check vet js-check web-check mcp-agent unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	@for m in $$(find examples -name go.mod -not -path '*/node_modules/*' 2>/dev/null); do \
		d=$$(dirname $$m); echo "go vet in $$d"; (cd $$d && $(GO) vet ./...) || exit 1; done

unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	@for m in $$(find examples -name go.mod -not -path '*/node_modules/*' 2>/dev/null); do \
		d=$$(dirname $$m); echo "go test in $$d"; (cd $$d && $(GO) test -race -count=1 ./...) || exit 1; done

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
# registry for npm ci and nothing else.
web-check:
	@cd $(WEB) && npm ci --no-audit --no-fund --loglevel=error && npm run --silent check && \
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && node build.mjs "$$tmp" && \
	if ! diff -rq "$$tmp" dist; then \
		echo "$(WEB)/dist does not match its sources: run 'make web' and commit web/dist"; exit 1; fi; \
	echo "web-check: $(WEB)/dist matches its sources"

# The browser and Node client package @accord-crdt/client (sync/js).
JS := sync/js

# js-check installs its pinned packages, type-checks it and fails if its
# committed types/ (the .d.ts generated from its JSDoc) differ from its
# sources, runs its Node tests against the real Go server (sync/js/test/server,
# built by the tests) and checks its bundle size against its budget.
js-check:
	@cd $(JS) && npm ci --no-audit --no-fund --loglevel=error && \
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
