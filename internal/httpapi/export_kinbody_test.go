package httpapi

// KinBody reports the ablation build (-tags kinbody) to the external tests.
const KinBody = kinBody
