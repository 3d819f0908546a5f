// Package ctxutil holds the context helpers the limiter packages share.
package ctxutil
