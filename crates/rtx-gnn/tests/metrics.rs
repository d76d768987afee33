//! The host metrics against values worked out by hand (the arithmetic is in
//! the comments), their error cases, and properties of perfect predictions.

use rtx_gnn::Error;
use rtx_gnn::metrics::{Metric, accuracy, argmax_rows, macro_f1, regression_metrics};

fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-15, "{a} != {b}");
}

fn model_error<T: std::fmt::Debug>(r: rtx_gnn::Result<T>, expect: &str) {
    match r {
        Err(Error::Model(m)) => assert!(m.contains(expect), "{m:?} does not say {expect:?}"),
        other => panic!("expected a model error saying {expect:?}, got {other:?}"),
    }
}

#[test]
fn three_class_confusion_by_hand() {
    //  i:      0  1  2  3  4  5  6  7  8  9
    let labels = [0, 0, 0, 1, 1, 2, 2, 2, 2, 0];
    let pred = [0, 1, 0, 1, 2, 2, 2, 0, 2, 0];
    // right at 0, 2, 3, 5, 6, 8, 9: 7 of 10
    assert_eq!(accuracy(&pred, &labels).unwrap(), 0.7);
    // class 0: TP {0, 2, 9} = 3, FP {7} = 1, FN {1} = 1: F1 = 6 / (6 + 1 + 1) = 0.75
    //   (precision 3/4, recall 3/4)
    // class 1: TP {3} = 1, FP {1} = 1, FN {4} = 1: F1 = 2 / 4 = 0.5
    // class 2: TP {5, 6, 8} = 3, FP {4} = 1, FN {7} = 1: F1 = 6 / 8 = 0.75
    // macro = (0.75 + 0.5 + 0.75) / 3 = 2/3
    close(macro_f1(&pred, &labels, 3).unwrap(), 2.0 / 3.0);
    // a larger class count adds only absent classes: the same mean
    close(macro_f1(&pred, &labels, 10).unwrap(), 2.0 / 3.0);
}

#[test]
fn absent_classes_are_left_out_of_the_mean() {
    // classes 1, 2, 4 occur nowhere (sklearn's unique_labels(y_true, y_pred) = [0, 3])
    // class 0: TP 1, FP 0, FN 1 -> 2 / 3; class 3: TP 2, FP 1, FN 0 -> 4 / 5
    // macro = (2/3 + 4/5) / 2 = 11/15
    close(
        macro_f1(&[0, 3, 3, 3], &[0, 0, 3, 3], 5).unwrap(),
        11.0 / 15.0,
    );
    // a class predicted but never true scores 0 (zero_division=0) and counts:
    // class 0: TP 1, FN 1 -> 2/3; class 1: TP 1 -> 1; class 2: FP 1 -> 0
    // macro = (2/3 + 1 + 0) / 3 = 5/9
    close(macro_f1(&[0, 2, 1], &[0, 0, 1], 3).unwrap(), 5.0 / 9.0);
    // nothing right: every present class scores 0
    assert_eq!(macro_f1(&[1, 0], &[0, 1], 2).unwrap(), 0.0);
    assert_eq!(accuracy(&[1, 0], &[0, 1]).unwrap(), 0.0);
}

#[test]
fn argmax_first_max_wins_and_nan_is_named() {
    let logits = [
        0.5f32,
        -1.0,
        0.5, // tie between 0 and 2: 0
        -3.0,
        -2.0,
        -2.5, // 1
        f32::NEG_INFINITY,
        1.0,
        f32::INFINITY, // 2
    ];
    assert_eq!(argmax_rows(&logits, 3).unwrap(), [0, 1, 2]);
    assert_eq!(argmax_rows(&[], 4).unwrap(), Vec::<u32>::new());
    assert_eq!(argmax_rows(&[7.0, 7.0], 1).unwrap(), [0, 0]);
    model_error(argmax_rows(&[0.0, 1.0, 2.0, f32::NAN], 2), "row 1");
    model_error(argmax_rows(&[0.0, 1.0, 2.0], 2), "not rows of 2");
    model_error(argmax_rows(&[0.0], 0), "0 classes");
}

#[test]
fn regression_by_hand() {
    // rows (target | pred): [1, 10 | 1.5, 10], [2, 10 | 2, 11], [3, 10 | 2.5, 10]
    let target = [1.0f32, 10.0, 2.0, 10.0, 3.0, 10.0];
    let pred = [1.5f32, 10.0, 2.0, 11.0, 2.5, 10.0];
    let m = regression_metrics(&pred, &target, 2).unwrap();
    // errors 0.5, 0, 0, 1, -0.5, 0: mse = (0.25 + 1 + 0.25) / 6 = 0.25, mae = 2 / 6
    assert_eq!(m.mse, 0.25);
    close(m.mae, 1.0 / 3.0);
    // column 0: mean 2, SS_tot = 1 + 0 + 1 = 2, SS_res = 0.25 + 0 + 0.25 = 0.5,
    //   r2 = 1 - 0.5 / 2 = 0.75
    // column 1: constant target (SS_tot = 0), SS_res = 1 != 0: sklearn's 0.0
    // uniform average: (0.75 + 0) / 2 = 0.375
    assert_eq!(m.r2, 0.375);

    // a constant column predicted exactly scores 1.0:
    // column 0: mean 2, SS_tot = 2, SS_res = 1 + 1 = 2 -> 0; column 1 -> 1; mean 0.5
    let m = regression_metrics(&[2.0, 5.0, 2.0, 5.0], &[1.0, 5.0, 3.0, 5.0], 2).unwrap();
    assert_eq!(m.r2, 0.5);
    assert_eq!(m.mse, 0.5);
    assert_eq!(m.mae, 0.5);

    // worse than the mean: SS_res = 4 + 0 + 4 = 8, SS_tot = 1 + 0 + 1 = 2, r2 = 1 - 4 = -3
    let m = regression_metrics(&[3.0, 2.0, 1.0], &[1.0, 2.0, 3.0], 1).unwrap();
    assert_eq!(m.r2, -3.0);
    close(m.mse, 8.0 / 3.0);
    close(m.mae, 4.0 / 3.0);
    // predicting the mean scores 0
    assert_eq!(
        regression_metrics(&[2.0; 3], &[1.0, 2.0, 3.0], 1)
            .unwrap()
            .r2,
        0.0
    );
}

/// A deterministic stream for the property tests (an LCG's high bits).
fn stream(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    }
}

#[test]
fn perfect_predictions() {
    let mut next = stream(39);
    for (n, classes) in [(1, 1), (5, 3), (64, 7), (300, 40)] {
        let labels: Vec<u32> = (0..n).map(|_| (next() % classes) as u32).collect();
        assert_eq!(accuracy(&labels, &labels).unwrap(), 1.0);
        assert_eq!(macro_f1(&labels, &labels, classes as usize).unwrap(), 1.0);
        // logits whose maximum is the label
        let mut logits = vec![0.0f32; n * classes as usize];
        for (row, &l) in labels.iter().enumerate() {
            logits[row * classes as usize + l as usize] = 1.0;
        }
        assert_eq!(argmax_rows(&logits, classes as usize).unwrap(), labels);
    }
    for (rows, dim) in [(2, 1), (10, 3), (257, 4)] {
        let target: Vec<f32> = (0..rows * dim)
            .map(|_| (next() % 2001) as f32 / 100.0 - 10.0)
            .collect();
        let m = regression_metrics(&target, &target, dim).unwrap();
        assert_eq!((m.mse, m.mae, m.r2), (0.0, 0.0, 1.0));
    }
    // constant targets predicted exactly: r2 1 too
    let m = regression_metrics(&[4.0; 6], &[4.0; 6], 2).unwrap();
    assert_eq!((m.mse, m.mae, m.r2), (0.0, 0.0, 1.0));
}

#[test]
fn metrics_are_deterministic_and_bounded() {
    let mut next = stream(7);
    let labels: Vec<u32> = (0..1000).map(|_| (next() % 5) as u32).collect();
    let pred: Vec<u32> = (0..1000).map(|_| (next() % 5) as u32).collect();
    let f1 = macro_f1(&pred, &labels, 5).unwrap();
    assert_eq!(f1.to_bits(), macro_f1(&pred, &labels, 5).unwrap().to_bits());
    assert!((0.0..=1.0).contains(&f1));
    let acc = accuracy(&pred, &labels).unwrap();
    assert!((0.0..=1.0).contains(&acc));
    let target: Vec<f32> = (0..600).map(|_| next() as f32 / 1e9).collect();
    let guess: Vec<f32> = (0..600).map(|_| next() as f32 / 1e9).collect();
    let a = regression_metrics(&guess, &target, 3).unwrap();
    assert_eq!(a, regression_metrics(&guess, &target, 3).unwrap());
    assert!(a.mse >= 0.0 && a.mae >= 0.0 && a.r2 <= 1.0);
    assert!(a.mae * a.mae <= a.mse * (1.0 + 1e-12), "mae^2 <= mse");
}

#[test]
fn bad_input_is_a_clear_error() {
    model_error(accuracy(&[0, 1], &[0]), "2 predictions but 1");
    model_error(accuracy(&[], &[]), "no labels");
    model_error(macro_f1(&[0], &[0, 1], 2), "1 predictions but 2");
    model_error(macro_f1(&[], &[], 2), "no labels");
    model_error(
        macro_f1(&[0, 1, 2], &[0, 1, 4], 4),
        "labels[2] = 4 is not below the class count 4",
    );
    model_error(macro_f1(&[0, 3, 0], &[0, 1, 1], 3), "pred[1] = 3");
    model_error(macro_f1(&[0], &[0], 0), "class count 0");
    model_error(regression_metrics(&[1.0, 2.0], &[1.0, 2.0], 0), "dim 0");
    model_error(
        regression_metrics(&[1.0], &[1.0, 2.0], 1),
        "1 predictions but 2",
    );
    model_error(regression_metrics(&[1.0; 3], &[1.0; 3], 2), "not rows of 2");
    model_error(
        regression_metrics(&[1.0; 2], &[1.0; 2], 2),
        "at least 2 rows, got 1",
    );
    model_error(
        regression_metrics(&[1.0, f32::NAN], &[1.0, 2.0], 1),
        "pred[1] = NaN is not finite",
    );
    model_error(
        regression_metrics(&[1.0, 2.0], &[f32::INFINITY, 2.0], 1),
        "target[0] = inf is not finite",
    );
}

#[test]
fn metric_names() {
    for m in Metric::ALL {
        assert_eq!(m.name().parse::<Metric>().unwrap(), m);
        assert_eq!(m.to_string(), m.name());
    }
    assert_eq!("Macro-F1".parse::<Metric>().unwrap(), Metric::MacroF1);
    assert_eq!("R2".parse::<Metric>().unwrap(), Metric::R2);
    let up: Vec<_> = Metric::ALL
        .into_iter()
        .filter(|m| m.higher_is_better())
        .collect();
    assert_eq!(up, [Metric::Accuracy, Metric::MacroF1, Metric::R2]);
    model_error(
        "f1".parse::<Metric>(),
        "unknown metric \"f1\": expected one of accuracy, macro-f1, mse, mae, r2, loss",
    );
}
