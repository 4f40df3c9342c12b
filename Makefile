# Accord. `make test` is what CI runs.
GO        ?= go
PKGS      := ./...
FUZZTIME  ?= 10s

.PHONY: test fmt-check vet unit bench fuzz run tidy

test: fmt-check vet unit

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
