// Package archtest holds the test that keeps the package structure as
// docs/ARCHITECTURE.md draws it: the data packages are leaves, render and
// the rulesets never pull the Kubernetes client libraries, and diff and
// apply never import render. It has no code of its own.
package archtest
