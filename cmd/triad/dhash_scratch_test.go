package main

import (
	"testing"
	"time"
)

func TestDHashClusterScratch(t *testing.T) {
	d := startDHash(t, 8, "--redundancy", "replicas")
	for i := 0; i < 4; i++ {
		d.check()
		t.Logf("at %d:\n%s", i, d.printViews())
		time.Sleep(2 * time.Second)
	}
}
