// Package apicheck holds tests of the module's public surface: no exported
// identifier of a package outside internal/ may mention a type defined under
// internal/, since no importer could name it.
package apicheck
