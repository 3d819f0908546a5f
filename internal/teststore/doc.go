// Package teststore makes the module's stores for tests: each constructor fails the test
// when the store's New returns an error, so a test reads as one line per store.
package teststore
