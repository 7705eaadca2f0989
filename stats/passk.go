package stats

import "math"

// TaskTrials counts the trials of one task (scenario): N runs, Successes of
// which succeeded.
type TaskTrials struct {
	N, Successes int
}

// PassK is pass^k or pass@k averaged over tasks.
type PassK struct {
	K        int
	Estimate float64 // mean of the per-task values over included tasks
	// SE is the standard error of that mean from the spread across tasks,
	// sd/√T with the n − 1 sample standard deviation (NaN when T < 2).
	SE       float64
	CI       Interval // Estimate ± z·SE, clipped to [0, 1]
	Tasks    int      // tasks included (N ≥ k)
	Excluded int      // tasks excluded because N < k; reported, never dropped silently
}

// PassHatKTask returns the unbiased per-task estimate of pass^k, the
// probability that k trials drawn without replacement from the n observed all
// succeed (tau-bench, Yao et al. 2024):
//
//	C(c, k)/C(n, k) = Π_{i=0}^{k−1} (c − i)/(n − i),
//
// computed as that product to avoid overflow. It is NaN unless
// 0 ≤ c ≤ n, 1 ≤ k ≤ n.
func PassHatKTask(n, c, k int) float64 {
	if !validCounts(c, n) || k < 1 || k > n {
		return math.NaN()
	}
	v := 1.0
	for i := range k {
		v *= float64(c-i) / float64(n-i)
	}
	return v
}

// PassAtKTask returns the unbiased per-task estimate of pass@k, the
// probability that at least one of k trials drawn without replacement from
// the n observed succeeds (Chen et al. 2021, "Evaluating Large Language
// Models Trained on Code"):
//
//	1 − C(n − c, k)/C(n, k) = 1 − Π_{i=n−c+1}^{n} (1 − k/i),
//
// which is 1 when n − c < k. It is NaN unless 0 ≤ c ≤ n, 1 ≤ k ≤ n.
func PassAtKTask(n, c, k int) float64 {
	if !validCounts(c, n) || k < 1 || k > n {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod
}

// PassHatK averages [PassHatKTask] over tasks (pass^k: all k succeed).
// Tasks with N < k are excluded and counted in Excluded. A task with
// Successes outside [0, N], or k < 1, makes the result NaN.
func PassHatK(tasks []TaskTrials, k int, conf float64) PassK {
	return averageOverTasks(tasks, k, conf, PassHatKTask)
}

// PassAtK averages [PassAtKTask] over tasks (pass@k: at least one of k
// succeeds). Tasks with N < k are excluded and counted in Excluded. A task
// with Successes outside [0, N], or k < 1, makes the result NaN.
func PassAtK(tasks []TaskTrials, k int, conf float64) PassK {
	return averageOverTasks(tasks, k, conf, PassAtKTask)
}

func averageOverTasks(tasks []TaskTrials, k int, conf float64, per func(n, c, k int) float64) PassK {
	res := PassK{K: k, Estimate: math.NaN(), SE: math.NaN(), CI: nanInterval()}
	if k < 1 {
		return res
	}
	for _, t := range tasks {
		if !validCounts(t.Successes, t.N) {
			return res
		}
	}
	vals := make([]float64, 0, len(tasks))
	for _, t := range tasks {
		if t.N < k {
			res.Excluded++
			continue
		}
		vals = append(vals, per(t.N, t.Successes, k))
	}
	res.Tasks = len(vals)
	if len(vals) == 0 {
		return res
	}
	mean := 0.0
	for _, v := range vals {
		mean += v
	}
	mean /= float64(len(vals))
	res.Estimate = mean
	if len(vals) < 2 {
		return res
	}
	ss := 0.0
	for _, v := range vals {
		ss += (v - mean) * (v - mean)
	}
	res.SE = math.Sqrt(ss/float64(len(vals)-1)) / math.Sqrt(float64(len(vals)))
	res.CI = normalCI(mean, res.SE, zCrit(conf), true, 0, 1)
	return res
}
