// Package spin holds the spin-wait hint of the engine's poll loops (the engine's
// own package links C code, which rules out Go assembly there). It imports
// nothing and must never import the engine.
package spin
