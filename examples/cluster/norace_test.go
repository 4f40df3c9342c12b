//go:build !race

package main

// raceEnabled says the tests run with the race detector.
const raceEnabled = false
