package exp

// hourlyMean is each hour's mean over the trials of hourly, which holds
// the trials' hourly samples one trial after another (addSim appends
// them), every trial the same number of hours. It is Fig. 11's series.
func hourlyMean(hourly []float64, trials int) []float64 {
	if trials <= 0 || len(hourly)%trials != 0 {
		return nil
	}
	hours := len(hourly) / trials
	out := make([]float64, hours)
	for i, v := range hourly {
		out[i%hours] += v / float64(trials)
	}
	return out
}
