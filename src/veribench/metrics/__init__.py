"""Pure metric functions (no I/O): rates with Wilson intervals, AUROC with DeLong or
bootstrap intervals, TPR at fixed FPR, decision thresholds, and vectorised per-group versions.

Conventions: labels 1 = AI (positive), 0 = human; scores higher = more likely AI; a text is
flagged when ``score > threshold``. Undefined metrics give NaN or ``None`` plus a reason and
an :class:`UndefinedMetricWarning`, never a crash; non-finite scores raise ``ValueError``.
"""

from veribench.metrics._base import UndefinedMetricWarning, as_binary, as_scores, drop_nonfinite
from veribench.metrics.bootstrap import BootstrapCI, bootstrap_ci
from veribench.metrics.grouped import (
    GroupAuroc,
    GroupedScores,
    GroupTprAtFpr,
    argsort_scores,
    group_agreement,
    group_auroc,
    group_counts,
    group_tpr_at_fpr,
    mean_of_defined,
)
from veribench.metrics.rates import Rate, rates_from_arrays, wilson, wilson_arrays
from veribench.metrics.roc import (
    AurocCI,
    RocCurve,
    TprAtFpr,
    auroc,
    auroc_ci,
    auroc_delong_variance,
    roc_curve_points,
    tpr_at_fpr,
)
from veribench.metrics.thresholds import (
    FLAG_RULE,
    balanced_accuracy,
    balanced_accuracy_arrays,
    confusion,
    fit_threshold,
    flag,
    threshold_at_fpr,
)

__all__ = [
    "FLAG_RULE", "AurocCI", "BootstrapCI", "GroupAuroc", "GroupTprAtFpr", "GroupedScores", "Rate", "RocCurve",
    "TprAtFpr", "UndefinedMetricWarning", "argsort_scores", "as_binary", "as_scores", "auroc", "auroc_ci", "auroc_delong_variance",
    "balanced_accuracy", "balanced_accuracy_arrays", "bootstrap_ci", "confusion", "drop_nonfinite", "fit_threshold",
    "flag", "group_agreement", "group_auroc", "group_counts", "group_tpr_at_fpr", "mean_of_defined", "rates_from_arrays",
    "roc_curve_points", "threshold_at_fpr", "tpr_at_fpr", "wilson", "wilson_arrays",
]
