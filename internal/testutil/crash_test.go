package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A journal keeps every line Append returned for and drops a line torn
// by a death mid-write, so the next line starts clean.
func TestJournalDropsATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.journal")
	if lines, err := ReadJournal(path); err != nil || len(lines) != 0 {
		t.Fatalf("a journal that does not exist reads %v, %v", lines, err)
	}
	j, lines, err := OpenJournal(path)
	if err != nil || len(lines) != 0 {
		t.Fatalf("open: %v, %v", lines, err)
	}
	for _, l := range []string{"t1 d1:1", "t2 d2:1,d3:2"} {
		if err := j.Append(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Append("two\nlines"); err == nil {
		t.Fatal("a line holding a newline was appended")
	}
	j.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("t3 d4") // torn: no newline
	f.Close()
	if lines, err := ReadJournal(path); err != nil || !slices.Equal(lines, []string{"t1 d1:1", "t2 d2:1,d3:2"}) {
		t.Fatalf("read: %q, %v", lines, err)
	}
	j, lines, err = OpenJournal(path)
	if err != nil || len(lines) != 2 {
		t.Fatalf("reopen: %q, %v", lines, err)
	}
	if err := j.Append("t3 d4:1"); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if lines, err := ReadJournal(path); err != nil || !slices.Equal(lines, []string{"t1 d1:1", "t2 d2:1,d3:2", "t3 d4:1"}) {
		t.Fatalf("after the torn line: %q, %v", lines, err)
	}
}

const crashChildEnv = "ACCORD_TESTUTIL_CRASH_CHILD"

type crashChildConfig struct {
	Journal string
	Lines   int    // lines to append before the point
	Point   string // "die": KillSelf; "fail": return an error; "": end
}

// TestCrashChild is the child of TestCrashScaffolding.
func TestCrashChild(t *testing.T) {
	var cfg crashChildConfig
	ChildMain(crashChildEnv, &cfg, func() error {
		j, _, err := OpenJournal(cfg.Journal)
		if err != nil {
			return err
		}
		for i := range cfg.Lines {
			if err := j.Append(string(rune('a' + i))); err != nil {
				return err
			}
		}
		switch cfg.Point {
		case "die":
			KillSelf("after-lines")
		case "fail":
			return errors.New("it went wrong")
		}
		return j.Append("end")
	})
}

// A child configured through the environment dies where KillSelf is
// called, its journal holding what it appended before; one whose work
// fails reports it as a BAD line; one that ends appends the rest.
func TestCrashScaffolding(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		point  string
		killed bool
		bad    bool
		lines  []string
	}{
		{"die", true, false, []string{"a", "b"}},
		{"fail", false, true, []string{"a", "b"}},
		{"", false, false, []string{"a", "b", "end"}},
	} {
		t.Run("point "+tc.point, func(t *testing.T) {
			journal := filepath.Join(dir, tc.point+".journal")
			c := RunChildConfig(t, "TestCrashChild", crashChildEnv, crashChildConfig{Journal: journal, Lines: 2, Point: tc.point}, 0, tc.point)
			if c.Killed != tc.killed || (len(c.Bad()) > 0) != tc.bad {
				t.Fatalf("killed %v, bad %q; want killed %v, bad %v\n%s\n%s", c.Killed, c.Bad(), tc.killed, tc.bad, c.Tail(5), c.Stderr)
			}
			if tc.killed && !slices.Contains(c.Lines, "KILL after-lines") {
				t.Fatalf("the child did not say where it died:\n%s", c.Tail(5))
			}
			if lines, err := ReadJournal(journal); err != nil || !slices.Equal(lines, tc.lines) {
				t.Fatalf("journal %q, %v; want %q", lines, err, tc.lines)
			}
		})
	}
}
