//go:build race

package jetstream_test

const raceEnabled = true
