package boltstore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
)

// boltLogger passes bbolt's messages to a *slog.Logger. Formatting is
// skipped for levels the logger does not enable, since bbolt logs every
// transaction at debug level.
//
// Open hands bbolt a *boltLogger: bbolt prints its options with %p when it
// opens a file, which a struct value turns into "%!p(...)".
type boltLogger struct{ l *slog.Logger }

func (b boltLogger) log(level slog.Level, v ...any) {
	if b.l.Enabled(context.Background(), level) {
		b.l.Log(context.Background(), level, fmt.Sprint(v...), "component", "bbolt")
	}
}

func (b boltLogger) logf(level slog.Level, format string, v ...any) {
	if b.l.Enabled(context.Background(), level) {
		b.l.Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "bbolt")
	}
}

func (b boltLogger) Debug(v ...any)                 { b.log(slog.LevelDebug, v...) }
func (b boltLogger) Debugf(format string, v ...any) { b.logf(slog.LevelDebug, format, v...) }

// bbolt's info messages (the options it opened a file with, pointers
// and all) are detail for debugging, not events of the store.
func (b boltLogger) Info(v ...any)                 { b.log(slog.LevelDebug, v...) }
func (b boltLogger) Infof(format string, v ...any) { b.logf(slog.LevelDebug, format, v...) }
func (b boltLogger) Warning(v ...any)              { b.log(slog.LevelWarn, v...) }
func (b boltLogger) Warningf(format string, v ...any) {
	b.logf(slog.LevelWarn, format, v...)
}
func (b boltLogger) Error(v ...any)                 { b.log(slog.LevelError, v...) }
func (b boltLogger) Errorf(format string, v ...any) { b.logf(slog.LevelError, format, v...) }

// Fatal and Panic keep the meaning bbolt's own logger gives them.

func (b boltLogger) Fatal(v ...any) { b.log(slog.LevelError, v...); os.Exit(1) }
func (b boltLogger) Fatalf(format string, v ...any) {
	b.logf(slog.LevelError, format, v...)
	os.Exit(1)
}
func (b boltLogger) Panic(v ...any) { s := fmt.Sprint(v...); b.log(slog.LevelError, s); panic(s) }
func (b boltLogger) Panicf(format string, v ...any) {
	s := fmt.Sprintf(format, v...)
	b.log(slog.LevelError, s)
	panic(s)
}
