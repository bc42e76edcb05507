package render

// HomeProxyPort exposes homeProxyPort to the external tests.
var HomeProxyPort = homeProxyPort
var SamePort = samePort
