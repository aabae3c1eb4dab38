# Rocalytics Swift SDKs: one entry point for building, testing and running the tools.
# `make help` lists the targets.

SWIFT      ?= swift
PYTHON     ?= python3
PACKAGES   := Core Onboarding Paywall RocalyticsClient Score Rocalytics
# Every payload a test captures is written here and validated against the JSON Schemas.
CAPTURE_DIR := $(CURDIR)/.captured
export TRACKER_CAPTURE_DIR := $(CAPTURE_DIR)
SWIFT_TEST_FLAGS ?=

.PHONY: help deps deps-browser curl-apple test-all test-packages test-integration check-generated check-no-foundation validate-payloads validate-openapi demo bench collector release test-release generate check-readme check-apple docs lint format test-tsan test-soak test-reliability \
        $(addprefix test-,$(shell echo $(PACKAGES) | tr A-Z a-z)) test-tools test-browser

help:
	@echo "make demo              run the demo (the README's main job)"
	@echo "make test-all          every package's tests, generator drift checks, payload and OpenAPI validation, docs"
	@echo "make test-<package>    one package: test-core test-onboarding test-paywall test-rocalyticsclient test-score"
	@echo "make test-tsan         every package's tests under ThreadSanitizer"
	@echo "make test-integration  the integrations an app wires, end to end (Integration/)"
	@echo "make test-reliability  the reliability and security suite (crashes, faults, hostile input, concurrency)"
	@echo "make test-soak         the same suite with much longer crash and property loops (SOAK=1)"
	@echo "make test-browser      the collector's web debugger in headless chromium (screenshots in out/)"
	@echo "make collector         local ingest on 127.0.0.1:\$$PORT (default 8787), SQLite in \$$DB"
	@echo "make validate-openapi  the captured Rocalytics API requests against the API's OpenAPI description"
	@echo "make bench             benchmarks (release build), results in out/bench.json"
	@echo "make docs              DocC documentation of every package, in out/docs/<Module>.doccarchive (fails on any DocC warning)"
	@echo "make lint              swift format lint --strict over every package (make format rewrites in place)"
	@echo "make check-no-foundation  fails when a Linux binary using only Core, Onboarding, Paywall or Score links Foundation"
	@echo "make check-apple       Linux checks of what Apple builds would catch (API availability, extension safety, CI schemes, the example, curl-apple)"
	@echo "make deps              install what is missing (libcurl and SQLite headers, Python jsonschema, pyyaml, openapi-schema-validator; deps-browser: chromium, chromium-driver, selenium)"
	@echo "make curl-apple        (Mac) build Packages/Core/Artifacts/CTrackerLibcurl.xcframework"

# On a Mac with Xcode: the static libcurl XCFramework the Apple builds link (Tools/curl-apple).
curl-apple:
	bash Tools/curl-apple/build.sh

# Installs the system and Python packages the build and the tests need, when missing.
deps:
	@sh Tools/scripts/install-deps.sh

# The same, plus chromium, chromium-driver and Python's selenium for the browser test.
deps-browser:
	@sh Tools/scripts/install-deps.sh --browser

test-all: deps
	@$(MAKE) --no-print-directory lint
	@rm -rf $(CAPTURE_DIR)
	@$(MAKE) --no-print-directory test-packages
	@echo "== swift test: Integration"
	@$(SWIFT) test --package-path Integration $(SWIFT_TEST_FLAGS)
	@echo "== swift test: Tools"
	@$(SWIFT) test --package-path Tools $(SWIFT_TEST_FLAGS)
	@echo "== swift test: Reliability"
	@$(SWIFT) test --package-path Reliability $(SWIFT_TEST_FLAGS)
	@$(MAKE) --no-print-directory check-generated
	@$(MAKE) --no-print-directory validate-payloads
	@$(MAKE) --no-print-directory validate-openapi OPENAPI_REQUIRE=$(OPENAPI_REQUIRED_KINDS)
	@$(MAKE) --no-print-directory check-readme
	@$(MAKE) --no-print-directory check-no-foundation
	@$(MAKE) --no-print-directory check-apple
	@$(MAKE) --no-print-directory docs
	@$(MAKE) --no-print-directory test-release
	@$(MAKE) --no-print-directory test-browser
	@echo "== demo (smoke run)"
	@$(MAKE) --no-print-directory demo > out-demo.log 2>&1 || { cat out-demo.log; exit 1; }
	@tail -1 out-demo.log

test-packages:
	@set -e; for p in $(PACKAGES); do \
	  if [ -f Packages/$$p/Package.swift ]; then \
	    echo "== swift test: $$p"; \
	    $(SWIFT) test --package-path Packages/$$p $(SWIFT_TEST_FLAGS); \
	  fi; \
	done

# Every package's tests under ThreadSanitizer (separate build directory). A failing run prints
# ThreadSanitizer's reports last, whole and then in short (Tools/scripts/tsan-test.sh).
# Each package keeps its own build directory here and in test-all: in a directory shared between
# packages, `#if canImport(OnboardingTracker)` in RocalyticsClient's examples sees the module the
# Onboarding package built there and compiles code whose link then fails (and a target could import
# a module it never declares). A package's own directory is the check that it builds on its own.
test-tsan: deps
	@set -e; for p in $(PACKAGES); do \
	  if [ -f Packages/$$p/Package.swift ]; then \
	    echo "== swift test --sanitize=thread: $$p"; \
	    SWIFT=$(SWIFT) Tools/scripts/tsan-test.sh Packages/$$p Packages/$$p/.build-tsan $(SWIFT_TEST_FLAGS); \
	  fi; \
	done
	@echo "== swift test --sanitize=thread: Integration"
	@SWIFT=$(SWIFT) Tools/scripts/tsan-test.sh Integration Integration/.build-tsan $(SWIFT_TEST_FLAGS)
	@echo "== swift test --sanitize=thread: Reliability"
	@SWIFT=$(SWIFT) Tools/scripts/tsan-test.sh Reliability Reliability/.build-tsan $(SWIFT_TEST_FLAGS)

# The reliability suite with much longer crash and property loops (SOAK=1).
test-soak: deps
	@rm -rf $(CAPTURE_DIR)
	SOAK=1 $(SWIFT) test --package-path Reliability $(SWIFT_TEST_FLAGS)
	@$(MAKE) --no-print-directory validate-payloads

# The integrations an app wires, compiled and run end to end (the README's cross-package snippets).
test-integration: deps
	$(SWIFT) test --package-path Integration $(SWIFT_TEST_FLAGS)

test-reliability: deps
	$(SWIFT) test --package-path Reliability $(SWIFT_TEST_FLAGS)

test-core: deps
	$(SWIFT) test --package-path Packages/Core $(SWIFT_TEST_FLAGS)
test-onboarding: deps
	$(SWIFT) test --package-path Packages/Onboarding $(SWIFT_TEST_FLAGS)
test-paywall: deps
	$(SWIFT) test --package-path Packages/Paywall $(SWIFT_TEST_FLAGS)
test-rocalyticsclient: deps
	$(SWIFT) test --package-path Packages/RocalyticsClient $(SWIFT_TEST_FLAGS)
test-score: deps
	$(SWIFT) test --package-path Packages/Score $(SWIFT_TEST_FLAGS)
test-tools: deps
	$(SWIFT) test --package-path Tools $(SWIFT_TEST_FLAGS)

# Fails when a checked-in generated file differs from a fresh generation.
generate:
	$(SWIFT) run --package-path Tools -q codegen

check-generated:
	@echo "== generator drift check"
	@$(SWIFT) run --package-path Tools -q codegen --check

# The toolchain's formatter (`swift format`, configuration in .swift-format): `make lint` fails on
# any difference from the format (generated files opt out with `swift-format-ignore-file`);
# `make format` rewrites the files in place. Format before committing; then re-copy any README
# excerpt of a reformatted example (`make check-readme` names it).
FORMAT_PATHS = Packages Tools Integration Reliability Examples
lint:
	@echo "== swift format lint --strict"
	@$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS)

format:
	@$(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)

# Every README excerpt marked `<!-- example: PATH -->` must still be part of its compiled example file.
check-readme:
	@$(PYTHON) Tools/scripts/check-readme.py

# No Linux binary using only Core, Onboarding, Paywall or Score links a Foundation library
# (issue 36 item 5): builds Tools/foundation-check and reads each program's dynamic section.
check-no-foundation:
	@echo "== no Foundation on Linux (Core, Onboarding, Paywall, Score)"
	@SWIFT=$(SWIFT) sh Tools/scripts/check-no-foundation.sh

# What Linux builds cannot see and Apple builds would stop on (issue 27): every use of an API newer
# than a package's platform floors must be inside @available / #available (the scanner's own
# fixtures first), the Apple CI's schemes must be those Xcode generates, the example app's shared
# file must type-check with warnings as errors, and the curl-apple build's pins, symbol check and
# scripts (the parts that need no Mac) must hold.
check-apple: deps
	@echo "== Apple checks: API availability, curl-apple"
	@$(PYTHON) Tools/scripts/test-check-availability.py
	@$(PYTHON) Tools/scripts/check-availability.py
	@$(PYTHON) Tools/scripts/check-apple-ci.py
	@$(PYTHON) Tools/scripts/test-check-mac-shell.py
	@$(PYTHON) Tools/scripts/check-mac-shell.py
	@bash Tools/scripts/typecheck-example.sh
	@bash Tools/curl-apple/test-build.sh

# The DocC documentation of every package module (catalog + symbol graphs), out/docs/<Module>.doccarchive.
# Any DocC warning (a broken symbol or article link) fails it. `make docs MODULES=ScoreTracker` builds one.
docs:
	@sh Tools/scripts/build-docs.sh $(MODULES)

# Validates every payload the tests captured against its JSON Schema (draft 2020-12), each distinct
# payload once; the self-test first shows the faster validator gives the plain validator's errors.
validate-payloads:
	@echo "== payload validation"
	@$(PYTHON) Tools/scripts/validate-payloads.py --self-test
	@$(PYTHON) Tools/scripts/validate-payloads.py $(CAPTURE_DIR)

# Validates every Rocalytics API request the tests captured (RocalyticsClient's replay tests, and
# `collector serve` under the demo's tests) against the API's published OpenAPI description,
# Packages/RocalyticsClient/Contracts/rocalytics-openapi.yaml; the self-test first shows the checker
# accepts the reference client's requests and refuses broken ones. test-all requires the kinds its
# suites send (OPENAPI_REQUIRED_KINDS), so that a capture that silently stopped fails.
OPENAPI_REQUIRED_KINDS := identify,track:install,track:purchase,status
OPENAPI_REQUIRE ?=
validate-openapi:
	@echo "== OpenAPI validation (Rocalytics API requests)"
	@$(PYTHON) Tools/scripts/validate-openapi.py --self-test
	@$(PYTHON) Tools/scripts/validate-openapi.py $(CAPTURE_DIR) $(if $(OPENAPI_REQUIRE),--require $(OPENAPI_REQUIRE),)

# The README's main job. `make demo COLLECTOR=http://127.0.0.1:8787` sends to a collector that already runs.
demo: deps
	@$(SWIFT) build --package-path Tools --product collector
	@$(SWIFT) build --package-path Tools --product sample-app
	@$(SWIFT) build --package-path Tools --product demo
	@TRACKER_CAPTURE_DIR= Tools/.build/debug/demo $(if $(COLLECTOR),--collector $(COLLECTOR),)

# The local collector: `make collector PORT=8787 DB=out/collector.sqlite` (loopback only). It and the
# demo run without TRACKER_CAPTURE_DIR: a developer's session writes no request captures.
PORT ?= 8787
DB   ?= out/collector.sqlite
collector: deps
	@echo "web debugger: http://127.0.0.1:$(PORT)/ (open it in a browser; the collector is loopback only)"
	@$(SWIFT) build --package-path Tools --product collector
	TRACKER_CAPTURE_DIR= Tools/.build/debug/collector serve --port $(PORT) --db $(DB)

# The collector's web debugger in headless chromium (Selenium): live stream, rejections, funnels
# equal to `collector report`, hostile payloads. Screenshots in out/.
test-browser: deps-browser
	@echo "== browser test: collector web debugger"
	@$(SWIFT) build --package-path Tools --product collector
	@$(SWIFT) build --package-path Tools --product sample-app
	@$(SWIFT) build --package-path Tools --product demo
	@$(PYTHON) Tools/scripts/browser-test.py

# `make release PACKAGE=Onboarding VERSION=0.1.0`: see Tools/release/release.sh.
release:
	@test -n "$(PACKAGE)" -a -n "$(VERSION)" || { echo "usage: make release PACKAGE=<name> VERSION=x.y.z"; exit 2; }
	bash Tools/release/release.sh $(PACKAGE) $(VERSION)

# Offline release test: Core and Onboarding into local bare repositories, then a consumer package.
test-release:
	@echo "== release test"
	@$(PYTHON) Tools/release/test-manifest-edit.py
	@bash Tools/release/test-release.sh Onboarding OnboardingTracker

bench: deps
	$(SWIFT) build --package-path Tools -c release --product bench
	$(SWIFT) build --package-path Tools -c release --product score-rss
	Tools/.build/release/bench --out out/bench.json
