// Package examples holds runnable programs that show the goportals API.
package examples
