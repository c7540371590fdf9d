#!/usr/bin/python3
"""
Trains two scikit-learn RandomForestClassifiers, writes them as ONNX the way skl2onnx lays a
forest out (TreeEnsembleClassifier -> Cast(label) + ZipMap(probabilities), outputs output_label
and output_probability), serves them with this server, and prints the server's answers next to
predict_proba for the same rows.

skl2onnx itself is not installable here (no PyPI), so the graph is built with onnx.helper from the
fitted trees, following skl2onnx's tree converter: leaf counts normalised and divided by the number
of trees, a binary forest keeping P(class 1) only.

Run from the repository root after `npm run build`:
    /usr/bin/python3 scripts/sklearn-demo/compare.py        (needs python3-sklearn python3-onnx)
"""
import json
import os
import subprocess
import tempfile
import time
import urllib.request

import numpy as np
from onnx import TensorProto, TypeProto, helper, save
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

PORT = 8091


def forest_to_onnx(model, n_features, labels):
    """A fitted RandomForestClassifier as skl2onnx writes it (target_opset {'': 13, 'ai.onnx.ml': 3})."""
    a = {k: [] for k in ['nodes_treeids', 'nodes_nodeids', 'nodes_featureids', 'nodes_modes', 'nodes_values',
                         'nodes_truenodeids', 'nodes_falsenodeids', 'class_treeids', 'class_nodeids', 'class_ids', 'class_weights']}
    binary = len(labels) == 2
    for t, est in enumerate(model.estimators_):
        tree = est.tree_
        for i in range(tree.node_count):
            leaf = tree.children_left[i] < 0
            a['nodes_treeids'].append(t)
            a['nodes_nodeids'].append(i)
            a['nodes_featureids'].append(0 if leaf else int(tree.feature[i]))
            a['nodes_modes'].append('LEAF' if leaf else 'BRANCH_LEQ')
            a['nodes_values'].append(0.0 if leaf else float(tree.threshold[i]))
            a['nodes_truenodeids'].append(0 if leaf else int(tree.children_left[i]))
            a['nodes_falsenodeids'].append(0 if leaf else int(tree.children_right[i]))
            if leaf:
                counts = tree.value[i][0]
                weights = counts / counts.sum() / len(model.estimators_)
                for k, w in ([(0, weights[1])] if binary else enumerate(weights)):
                    a['class_treeids'].append(t)
                    a['class_nodeids'].append(i)
                    a['class_ids'].append(k)
                    a['class_weights'].append(float(w))
    int_labels = not isinstance(labels[0], str)
    label_attr = {'classlabels_int64s': [int(x) for x in labels]} if int_labels else {'classlabels_strings': list(labels)}
    nodes = [
        helper.make_node('TreeEnsembleClassifier', ['input'], ['label', 'probabilities'], domain='ai.onnx.ml', post_transform='NONE', **label_attr, **a),
        helper.make_node('Cast', ['label'], ['output_label'], to=TensorProto.INT64) if int_labels else helper.make_node('Identity', ['label'], ['output_label']),
        helper.make_node('ZipMap', ['probabilities'], ['output_probability'], domain='ai.onnx.ml', **label_attr),
    ]
    zipmap_type = TypeProto()  # seq(map(label, tensor(float))); onnx 1.12's helper has no map type builder
    zipmap_type.sequence_type.elem_type.map_type.key_type = TensorProto.INT64 if int_labels else TensorProto.STRING
    zipmap_type.sequence_type.elem_type.map_type.value_type.tensor_type.elem_type = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, 'forest',
        [helper.make_tensor_value_info('input', TensorProto.FLOAT, [None, n_features])],
        [helper.make_tensor_value_info('output_label', TensorProto.INT64 if int_labels else TensorProto.STRING, [None]),
         helper.make_value_info('output_probability', zipmap_type)])
    onx = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13), helper.make_opsetid('ai.onnx.ml', 3)], producer_name='skl2onnx', producer_version='1.17.0')
    onx.ir_version = 8
    return onx


def post(model, body, content_type, accept):
    req = urllib.request.Request(f'http://127.0.0.1:{PORT}/models/{model}/invoke', data=body.encode(), headers={'Content-Type': content_type, 'Accept': accept})
    with urllib.request.urlopen(req) as res:
        return res.read().decode()


def main():
    store = tempfile.mkdtemp(prefix='sklearn-demo-')
    cases = []
    for name, data, label_names in [('breast-cancer-rf', load_breast_cancer(), None), ('iris-rf', load_iris(), True)]:
        X = data.data.astype(np.float32)
        y = np.array(data.target_names)[data.target] if label_names else data.target
        X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.2, random_state=0)
        clf = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X_train, y_train)
        os.makedirs(os.path.join(store, name))
        save(forest_to_onnx(clf, X.shape[1], list(clf.classes_)), os.path.join(store, name, 'model.onnx'))
        cases.append((name, clf, X_test[:5]))
    config = os.path.join(store, 'config.properties')
    with open(config, 'w') as f:
        f.write(f'inference_address=http://127.0.0.1:{PORT}\nmanagement_address=http://127.0.0.1:{PORT}\ndefault_workers_per_model=1\nmodel_cache=off\n')
    server = subprocess.Popen(['node', 'dist/src/main.js', '--mms-config', config, '--model-store', store, '--models', ','.join(f'{n}={store}/{n}' for n, _, _ in cases)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                described = [json.loads(urllib.request.urlopen(f'http://127.0.0.1:{PORT}/models/{n}').read()) for n, _, _ in cases]
                if all(d['workers'] and all(w['status'] == 'READY' for w in d['workers']) for d in described):
                    break
            except OSError:
                pass
            time.sleep(0.1)
        worst = 0.0
        for name, clf, rows in cases:
            csv_rows = '\n'.join(','.join(repr(float(v)) for v in row) for row in rows) + '\n'
            answer = json.loads(post(name, json.dumps({'instances': rows.tolist()}), 'application/json', 'application/json'))
            csv_answer = post(name, csv_rows, 'text/csv', 'text/csv')
            expected = clf.predict_proba(rows)
            print(f'\n## {name}: {len(clf.classes_)} classes {list(clf.classes_)}')
            print(f'JSON answer, first row: {json.dumps(answer["predictions"][0])}')
            print(f'text/csv answer:\n{csv_answer}', end='')
            print('| row | server output_label | sklearn predict | server output_probability | sklearn predict_proba |')
            print('|---|---|---|---|---|')
            for r, (pred, want) in enumerate(zip(answer['predictions'], expected)):
                got = [pred['output_probability'][str(c)] for c in clf.classes_]
                worst = max(worst, float(np.max(np.abs(np.array(got) - want))))
                print(f'| {r} | {pred["output_label"]} | {clf.predict(rows[r:r + 1])[0]} | {", ".join(f"{p:.6f}" for p in got)} | {", ".join(f"{p:.6f}" for p in want)} |')
        print(f'\nlargest difference from predict_proba: {worst:.2e}')
    finally:
        server.terminate()
        server.wait()


if __name__ == '__main__':
    main()
