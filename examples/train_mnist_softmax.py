"""The MNIST tutorial's softmax regression, fed by tfr_convert.load() instead of queue runners.

    tfr-convert mnist SRC --out DATASET
    python examples/train_mnist_softmax.py DATASET [--epochs 5] [--batch-size 100] [--learning-rate 0.5]

Prints the test accuracy. The model is the tutorial's: y = softmax(x W + b) on the
flattened pixels scaled to [0, 1], cross-entropy, plain gradient descent.
"""

from __future__ import annotations

import argparse

import tensorflow as tf

import tfr_convert


def flatten(image, label):
    return tf.reshape(tf.cast(image, tf.float32) / 255.0, [-1]), label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=0.5)
    args = parser.parse_args()
    tf.random.set_seed(0)

    train = tfr_convert.load(args.dataset, "train", as_supervised=True, shuffle_buffer=10_000, seed=0)
    test = tfr_convert.load(args.dataset, "test", as_supervised=True)
    train = train.map(flatten).batch(args.batch_size)
    test = test.map(flatten).batch(1000)
    pixels = int(train.element_spec[0].shape[-1])
    weights = tf.Variable(tf.zeros([pixels, 10]))
    bias = tf.Variable(tf.zeros([10]))

    for epoch in range(args.epochs):
        for x, y in train:
            with tf.GradientTape() as tape:
                logits = x @ weights + bias
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            dw, db = tape.gradient(loss, [weights, bias])
            weights.assign_sub(args.learning_rate * dw)
            bias.assign_sub(args.learning_rate * db)
        print(f"epoch {epoch + 1}: loss {float(loss):.4f}")

    correct = total = 0
    for x, y in test:
        predicted = tf.argmax(x @ weights + bias, axis=1)
        correct += int(tf.reduce_sum(tf.cast(predicted == y, tf.int32)))
        total += int(tf.shape(y)[0])
    print(f"test accuracy: {correct / total:.4f} ({correct}/{total})")


if __name__ == "__main__":
    main()
