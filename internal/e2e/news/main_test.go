package news_test

import (
	"os"
	"testing"

	"triad/internal/e2e"
)

// TestMain removes the binary the tests built (e2e.Build).
func TestMain(m *testing.M) { os.Exit(e2e.Main(m)) }
