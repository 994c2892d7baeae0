// Package storetest holds the contract tests every store.Engine passes
// (RunContract) and the helpers they share with the engines' own tests: a
// hand-moved Clock and Blob, random content under its key. The engine
// packages, disk and mem, call RunContract from their tests; it lives here
// so both can without an import cycle.
//
//	func TestContract(t *testing.T) {
//		storetest.RunContract(t, func(t *testing.T, opt store.Options) store.Engine {
//			return mem.New(opt)
//		})
//	}
package storetest
