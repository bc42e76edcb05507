# Common tasks. `make build` stamps the version from git.
PKG     := github.com/kubectl-svcproxy/kubectl-svcproxy
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo none)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X $(PKG)/internal/cli.version=$(VERSION) \
           -X $(PKG)/internal/cli.commit=$(COMMIT) \
           -X $(PKG)/internal/cli.date=$(DATE)

.PHONY: build test demo bench fmt vet clean

build:
	go build -ldflags "$(LDFLAGS)" -o bin/kubectl-svcproxy ./cmd/kubectl-svcproxy

test:
	./hack/test.sh

demo:
	./hack/demo.sh

bench:
	go test -run '^$$' -bench . ./render ./apply/iptables

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	go vet ./...

clean:
	rm -rf bin dist
