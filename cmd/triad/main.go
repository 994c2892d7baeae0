package main

import (
	"encoding/json"
	"fmt"
	"os"

	"triad/internal/exp"
)

func main() {
	cfg := exp.DefaultRingConfig()
	cfg.Log = os.Stderr
	fmt.Sscan(os.Args[1], &cfg.Nodes)
	res, err := exp.RunRing(cfg)
	if err != nil {
		fmt.Println(err)
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
}
