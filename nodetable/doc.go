// Package nodetable is the node-local service table: every proxied Service
// port as one node sees it in one IP family, with its endpoints already
// sorted into the sets each traffic policy uses. It is the only input of
// the renderers, and its vocabulary (Family, Protocol, ServicePortName) is
// shared by the ruleset types.
//
// It imports only the standard library, so that the data packages
// (ruleset/...) and render stay free of the Kubernetes client libraries:
// cluster builds a table from API objects, and nothing here knows of them.
package nodetable
